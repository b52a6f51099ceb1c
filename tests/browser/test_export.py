"""The camera button on a figure saves what the sidebar asks for: an SVG file, drawn by plotly.js
in the browser (nothing is rendered on the server, nothing is fetched)."""
from .conftest import open_from_menu, wait_for_app


def test_the_camera_button_downloads_an_svg_of_the_figure_on_the_next_page_too(app_page):
    page = app_page.page
    app_page.goto("build")
    page.locator('[data-testid="stSidebar"] button', has_text="SVG").click()
    wait_for_app(page)
    open_from_menu(page, "Recurrent networks", "Gradients")  # the same session
    page.wait_for_url("**/gradients*")
    wait_for_app(page)
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.hover()  # the modebar shows on hover
    with page.expect_download() as download:
        chart.locator('.modebar-btn[data-title^="Download plot"]').click()
    saved = download.value
    assert saved.suggested_filename.endswith(".svg"), saved.suggested_filename
    svg = open(saved.path(), encoding="utf-8").read()
    assert svg.lstrip().startswith("<svg") and "</svg>" in svg
    assert 'width="1600"' in svg  # the slide size the camera button asks for, whole legend
