from pathlib import Path

from pretrained import kernels

# The same kernels on AVX2 and AVX-512 machines, set before torch is imported (pretrained/kernels.py): every
# figure the tests assert was measured with them, and the app servers the browser tests start
# inherit them.
kernels.pin()

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)  # small models: one thread is fastest and shares the machine well

# pytest-xdist (`--dist loadgroup`, pyproject.toml) runs the tests in two workers. The browser tests
# share one app server and one chromium, so they run in one worker beside the rest; tests sharing a
# training (functools.cache) carry their own xdist_group mark, so it is trained once.
BROWSER = Path(__file__).resolve().parent / "browser"


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the marks into the tests' ids
def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.resolve().is_relative_to(BROWSER):
            item.add_marker(pytest.mark.xdist_group("browser"))
