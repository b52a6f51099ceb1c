"""What a student costs in memory: the resident size (RSS) of one app process served as
deploy/serve_class.py serves it, idle, then after each of N browser sessions has opened a lesson
from its link and trained. The README's "Serving a class" quotes its output.

    python -m deploy.session_memory [--lesson rnn-forgets] [--steps 300] [--sessions 3]

Run from the repository's root with the test environment (./run_tests.sh makes it, and installs
Debian's chromium and nginx, which this drives through Playwright).
"""
import argparse

from playwright.sync_api import sync_playwright

from app.session.lessons import LESSONS
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, SCRIPT_TIMEOUT, StreamlitPage
from tests.browser.test_build_train import steps_trained
from tests.browser.test_lessons import lesson_link
from tests.browser.test_serve_class import serving_a_class, train


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Build & Train's lessons: the page whose progress line train() reads.
    build_lessons = [lesson.key for lesson in LESSONS if lesson.page == "build"]
    p.add_argument("--lesson", default="rnn-forgets", choices=build_lessons)
    p.add_argument("--steps", type=int, default=300, help="train each session to at least this step")
    p.add_argument("--sessions", type=int, default=3)
    args = p.parse_args()
    lesson = next(lesson for lesson in LESSONS if lesson.key == args.lesson)
    with serving_a_class(processes=1) as served, sync_playwright() as playwright:
        pid = served.pids[0]
        print(f"one app process, idle (no session yet): RSS {rss_mb(pid):.0f} MB")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for n in range(1, args.sessions + 1):
            context = browser.new_context()  # kept open: the session stays, as a student's tab would
            context.set_default_timeout(SCRIPT_TIMEOUT)
            page = StreamlitPage(context.new_page(), served.url)
            page.goto(lesson_link(lesson))
            train(page, args.steps)
            print(f"{n} session(s), each opened lesson {lesson.key!r} ({lesson.page}) and trained "
                  f"{steps_trained(page.page)} steps: RSS {rss_mb(pid):.0f} MB")
        browser.close()


if __name__ == "__main__":
    main()
