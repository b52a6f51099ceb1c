"""The spectral radius, swept (Gradients page) in a real browser, at 1400 wide and at a projector's
1024x768: the expander opens on the adding problem, draws its two figures, and the slider's ends
(ρ = 0.8 and 1.2) redraw the fan and its caption (screenshots: spectral-sweep-<size>.png,
spectral-sweep-high-projector.png, spectral-sweep-default-draw-projector.png)."""
from .conftest import wait_for_app

SIZES = {"wide": {"width": 1400, "height": 900}, "projector": {"width": 1024, "height": 768}}
EXPANDER = "The spectral radius, swept"
FIGURES = ("as ρ(W_hh) sweeps", "First step's share")


def titles(page) -> str:
    return " ".join(page.eval_on_selector_all(".gtitle", "els => els.map(e => e.textContent)"))  # SVG: no innerText


def section(page):
    return page.locator('[data-testid="stExpander"]').filter(has_text=EXPANDER)


def test_the_sweep_draws_its_fan_and_ratios_and_follows_the_slider_to_its_ends(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("gradients")
    section(page).locator("summary").click()
    wait_for_app(page)
    page.wait_for_function("() => document.querySelectorAll('.gtitle').length >= 6")
    assert all(figure in titles(page) for figure in FIGURES), titles(page)
    text = section(page).inner_text()
    assert "At ρ = 1.00" in text and "the adding problem (T = 50" in text and "Pascanu" in text
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"spectral-sweep-{size}")

    thumb = section(page).get_by_role("slider")
    for key, rho in (("End", "1.20"), ("Home", "0.80")):
        thumb.focus()
        thumb.press(key)
        wait_for_app(page)
        assert f"At ρ = {rho}" in section(page).inner_text()
        assert f"ρ = {float(rho):g} (slider)" in page.locator(".legendtext").all_text_contents()
        if rho == "1.20":
            app_page.screenshot("spectral-sweep-high-projector")
    section(page).get_by_text("PyTorch's default draw").click()
    wait_for_app(page)
    assert "σ_max = 1.444" in section(page).inner_text()  # the default draw's at ρ = 0.8: 1.8 ρ
    app_page.screenshot("spectral-sweep-default-draw-projector")
