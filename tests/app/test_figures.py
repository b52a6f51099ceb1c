"""Every figure goes through one place: presentation mode enlarges them all (type, lines, ticks,
legend under the plot), and the camera button exports them at a size fit for a slide (they came
out 462 x 300 with the legend cut)."""
import json

import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from app import pages
from app.charts.style import export_config, for_projector, wrap_title

from .conftest import MAIN


def figures(at) -> list[tuple[dict, dict]]:
    return [(json.loads(c.proto.spec), json.loads(c.proto.config)) for c in at.get("plotly_chart")]


def test_presentation_mode_enlarges_every_figure_on_every_page_and_exports_for_slides():
    for path in pages.PATHS.values():
        at = AppTest.from_file(MAIN, default_timeout=60).run()
        at.switch_page(path).run()
        plain = figures(at)
        at.toggle(key="presentation").set_value(True).run()
        assert not at.exception, path
        big = figures(at)
        assert len(big) == len(plain), path
        for (before, config), (after, _) in zip(plain, big, strict=True):
            options = config["toImageButtonOptions"]
            assert options["width"] >= 1600 and options["scale"] == 2 and options["format"] == "png"
            grown = after["layout"]["height"] > before["layout"]["height"]
            title = after["layout"].get("title", {}).get("font", {}).get("size", 0)
            assert grown and title > before["layout"].get("title", {}).get("font", {}).get("size", 15), path


def test_for_projector_puts_the_legend_under_the_plot_and_thickens_the_lines():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 2], name="a", line=dict(width=1.5)))
    fig.update_layout(height=300, legend=dict(x=1, y=1))
    big = for_projector(fig)
    assert big.layout.legend.orientation == "h" and big.layout.legend.y < 0
    assert big.data[0].line.width == 3 and big.layout.font.size >= 16 and big.layout.height == 390
    assert fig.layout.legend.x == 1 and fig.data[0].line.width == 1.5  # the original is untouched
    assert export_config(fig)["toImageButtonOptions"]["height"] == 480  # the figure's own aspect, 1600 wide


def test_a_long_title_in_a_column_breaks_into_lines_and_the_plot_makes_room():
    """At 1024 px, titles of half-width charts were cut ("Vanishing gradients: four cells, same tas")."""
    fig = go.Figure().update_layout(title_text="Vanishing gradients: four cells, same task and budget", height=300,
                                    margin=dict(t=50))
    wrapped = wrap_title(fig)
    lines = wrapped.layout.title.text.split("<br>")
    assert len(lines) == 2 and all(len(line) <= 34 for line in lines)
    assert " ".join(lines) == fig.layout.title.text and wrapped.layout.margin.t == 70 and wrapped.layout.height == 320
    assert wrap_title(go.Figure().update_layout(title_text="Gradient norm per parameter")).layout.title.text == (
        "Gradient norm per parameter")


def test_the_compare_pages_column_charts_wrap_their_long_titles():
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    at.switch_page(pages.PATHS["compare"]).run()
    titles = [spec["layout"]["title"]["text"] for spec, _ in figures(at)]
    assert titles and all(len(line) <= 34 for title in titles for line in title.split("<br>"))
    assert any("<br>" in title for title in titles)


def test_the_camera_button_saves_svg_when_the_sidebar_asks():
    """(Across a page change too: tests/browser/test_export.py downloads one from the next page.)"""
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    at.switch_page(pages.PATHS["build"]).run()
    assert {config["toImageButtonOptions"]["format"] for _, config in figures(at)} == {"png"}
    at.button_group(key="export_format").set_value("svg").run()
    assert not at.exception
    assert {config["toImageButtonOptions"]["format"] for _, config in figures(at)} == {"svg"}
