"""On a projector at 1024 x 768, with the sidebar open, nothing a teacher needs is cut: the
buttons' labels (they read "P / S / R"), the form's tabs (Training was cut); and presentation mode
makes every figure larger. Screenshots of both, to look at."""
from .conftest import open_from_menu, wait_for_app

PROJECTOR = {"width": 1024, "height": 768}
# Elements whose content is wider than the box that shows it: a cut label, a scrolled tab list.
# What a class sees cut: not what a folded sidebar holds (presentation mode folds it, off the screen's left).
CUT = """selector => [...document.querySelectorAll(selector)]
    .filter(el => el.offsetParent !== null && el.getBoundingClientRect().right > 0
                  && el.closest('[data-testid="stSidebar"][aria-expanded="false"]') === null
                  && el.scrollWidth > el.clientWidth + 1)
    .map(el => el.textContent.trim())"""


def test_build_and_train_holds_at_1024_by_768_and_presentation_mode_enlarges_it(app_page):
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("build")
    buttons = page.evaluate(CUT, 'button [data-testid="stMarkdownContainer"]')  # an ellipsis cuts a label
    assert buttons == [], f"cut button labels: {buttons}"
    tabs = page.evaluate(CUT, '[data-testid="stTabs"] [role="tablist"]')
    assert tabs == [], f"tabs that do not fit: {tabs}"
    for name in ("Play", "Step", "Reset"):
        assert page.get_by_role("button", name=name, exact=True).is_visible()
    app_page.screenshot("build-projector-default")

    title_size = "() => parseFloat(getComputedStyle(document.querySelector('.gtitle')).fontSize)"
    before = page.evaluate(title_size)
    page.get_by_text("Presentation mode").click()
    wait_for_app(page)
    page.wait_for_function(f"() => parseFloat(getComputedStyle(document.querySelector('.gtitle')).fontSize) > {before}")
    assert page.evaluate(title_size) >= before * 1.3
    app_page.screenshot("build-projector-presentation")
    from .test_lessons import TEXT_OUTSIDE  # here: test_lessons imports this module's names

    assert page.evaluate(TEXT_OUTSIDE) == []  # the y axes' titles of half-page figures were cut in half
    assert page.evaluate(LEGEND_ON_TITLE) == []


# Where an element lies in the window, before anything is scrolled: [top, bottom] in px.
SPAN = "selector => { const r = document.querySelector(selector).getBoundingClientRect(); return [r.top, r.bottom]; }"


def test_build_and_train_settings_show_without_scrolling_on_a_projector(app_page):
    """At 1024 x 768 the form's tabs and first setting are in the window as the page opens: under
    the sidebar's 17 navigation links they began 980 px down, a scroll away (issue 28, item 4)."""
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("build")
    tabs = page.evaluate(SPAN, '[data-testid="stSidebar"] [role="tablist"]')
    task = page.evaluate(SPAN, '[data-testid="stSidebar"] [data-testid="stSelectbox"]')
    app_page.screenshot("build-projector-settings")
    assert tabs[1] <= PROJECTOR["height"] and task[1] <= PROJECTOR["height"], (
        f"the settings' tabs end {tabs[1]:.0f} px down, its Task box {task[1]:.0f} px, "
        f"in a {PROJECTOR['height']} px window")


# Each figure shown, by title, with its narrowest panel's width in px (plotly's drag cover of a
# panel spans its plot area, axes' labels excluded).
PANEL_WIDTHS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .filter(chart => chart.getBoundingClientRect().width > 0 && !chart.closest('details:not([open])'))
    .map(chart => [(chart.querySelector('.gtitle') || {}).textContent || '(untitled)',
                   Math.min(...[...chart.querySelectorAll('.nsewdrag')].map(r => r.getBoundingClientRect().width))])"""
# Each legend entry's text that overlaps an x axis's title of its figure, as "figure title: entry / axis title".
LEGEND_ON_TITLE = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .filter(chart => chart.getBoundingClientRect().width > 0 && !chart.closest('details:not([open])'))
    .flatMap(chart => {
        const title = (chart.querySelector('.gtitle') || {}).textContent || '(untitled)';
        const box = el => el.getBoundingClientRect();
        const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const axes = [...chart.querySelectorAll('.g-xtitle text, .g-x2title text')];
        return [...chart.querySelectorAll('.legend .legendtext')].flatMap(entry => axes
            .filter(axis => meet(box(entry), box(axis)))
            .map(axis => `${title}: ${entry.textContent} / ${axis.textContent}`));
    })"""
NARROWEST_PANEL = 150  # px: 60-80 px panels of Compare cells read as slivers on a projector


def test_compare_cells_reads_on_a_projector_without_presentation_mode(app_page):
    """At 1024 x 768, out of presentation mode: no panel of Compare cells' figures is a sliver, no
    text of theirs is cut at the figure's edge, and the table of last measurements shows every
    column (its R² column was cut: issue 28, item 4)."""
    from .test_lessons import TEXT_OUTSIDE  # here: test_lessons imports this module's names

    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("compare")
    page.get_by_role("button", name="Step", exact=True).click()  # one step of every cell: lines to look at
    wait_for_app(page)
    app_page.screenshot("compare-projector-default")
    narrow = [(title, width) for title, width in page.evaluate(PANEL_WIDTHS) if width < NARROWEST_PANEL]
    assert narrow == [], f"panels narrower than {NARROWEST_PANEL} px: {narrow}"
    assert page.evaluate(TEXT_OUTSIDE) == []
    assert page.evaluate(LEGEND_ON_TITLE) == []
    tables = page.evaluate(CUT, '[data-testid="stTable"], [data-testid="stTable"] > div')
    assert tables == [], f"tables wider than their box: {tables}"


def test_gradients_legends_leave_the_axis_titles_readable_on_a_projector(app_page):
    """At 1024 x 768 on Gradients, after a step, no legend entry lies on an x axis's title (one did:
    issue 28, item 4), and no panel is a sliver."""
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("build")
    page.get_by_role("button", name="Step", exact=True).click()
    wait_for_app(page)
    open_from_menu(page, "Recurrent networks", "Gradients")
    page.wait_for_url("**/gradients*")
    wait_for_app(page)
    app_page.screenshot("gradients-projector-default")
    assert page.evaluate(LEGEND_ON_TITLE) == []
    narrow = [(title, width) for title, width in page.evaluate(PANEL_WIDTHS) if width < NARROWEST_PANEL]
    assert narrow == [], f"panels narrower than {NARROWEST_PANEL} px: {narrow}"


SIDEBAR_OPEN = """() => { const bar = document.querySelector('[data-testid="stSidebar"]');
    return bar !== null && bar.getAttribute('data-collapsed') === 'false' && bar.getBoundingClientRect().right > 0; }"""


def test_presentation_mode_folds_the_sidebar_and_keeps_the_axis_titles(app_page):
    """Turned on at 1024 x 768, presentation mode folds the sidebar away (the page gets its 300 px)
    and every figure's text stays inside the figure: its larger type cut the y axes' titles of
    half-page figures in half (issue 28, item 4). The sidebar opened again turns it off."""
    from .test_lessons import TEXT_OUTSIDE  # here: test_lessons imports this module's names

    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("compare")
    page.get_by_role("button", name="Step", exact=True).click()
    wait_for_app(page)
    assert page.evaluate(SIDEBAR_OPEN)
    page.get_by_text("Presentation mode").click()
    wait_for_app(page)
    page.wait_for_function(f"() => !({SIDEBAR_OPEN})()", timeout=5_000)
    wait_for_app(page)  # the figures redraw at the wider page
    app_page.screenshot("compare-projector-presentation")
    assert page.evaluate(TEXT_OUTSIDE) == []
    assert page.evaluate(LEGEND_ON_TITLE) == []
    narrow = [(title, width) for title, width in page.evaluate(PANEL_WIDTHS) if width < NARROWEST_PANEL]
    assert narrow == [], f"panels narrower than {NARROWEST_PANEL} px: {narrow}"

    page.locator('[data-testid="stExpandSidebarButton"]').click()
    page.wait_for_function(SIDEBAR_OPEN, timeout=5_000)
    page.get_by_text("Presentation mode").click()
    wait_for_app(page)
    assert page.evaluate(SIDEBAR_OPEN), "turning presentation mode off folded the sidebar"


def test_the_layer_table_shows_whole_on_a_projector(app_page):
    """At 1024 x 768 on Build & Train, a stacked bidirectional network's table of layers shows every
    column whole, with no scrolling inside it (it was cut: issue 28, item 4)."""
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("build?arch=lstm&num_layers=2&bidirectional=true")
    app_page.screenshot("build-projector-layers")
    main = '[data-testid="stMain"] '
    cut = page.evaluate(CUT, f'{main}[data-testid="stDataFrame"] .dvn-scroller, {main}[data-testid="stTable"], '
                             f'{main}[data-testid="stTable"] > div')
    assert cut == [], f"tables wider than their box: {cut}"


def test_the_buttons_that_open_a_model_are_never_cut_at_1024_by_768_nor_in_presentation_mode(app_page):
    """Issue 44, finding 4: the Encoder-decoder's five "Open an encoder-decoder" buttons and Generate's three
    read "English to …" and "Open the char-LST…" on a projector, in presentation mode too."""
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    for where, names, shot in (("attention", 5, "attention-open-buttons"), ("generate", 3, "generate-open-buttons")):
        app_page.goto(where)  # the default model (the adding problem) is neither: the page offers models
        for presenting in (False, True):
            if presenting:
                page.get_by_text("Presentation mode").click()
                wait_for_app(page)
            labels = page.evaluate("""() => [...document.querySelectorAll('button [data-testid="stMarkdownContainer"]')]
                .filter(el => el.offsetParent !== null).map(el => el.textContent.trim())""")
            assert sum(label.startswith(("Open ", "Copy ", "Dates ", "Reverse ", "Sort ", "English "))
                       for label in labels) >= names, labels
            buttons = page.evaluate(CUT, 'button [data-testid="stMarkdownContainer"]')
            assert buttons == [], f"{where}: cut button labels: {buttons}"
            app_page.screenshot(f"{shot}-{'presentation' if presenting else 'projector'}")
