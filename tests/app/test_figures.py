"""Every figure goes through one place: presentation mode enlarges them all (type, lines, ticks,
legend under the plot), and the camera button exports them at a size fit for a slide (they came
out 462 x 300 with the legend cut)."""
import json

import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from app import pages
from app.charts.style import WIDTH_ENCODES, export_config, for_projector, legend_rows, shown_length, wrap_title

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


def test_for_projector_keeps_the_width_of_a_line_whose_width_is_data():
    """The lines view of attention draws a weight as a line's width: thickened to 3 px like every
    other line in presentation mode, every weight looked alike."""
    fig = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(width=0.8), meta={WIDTH_ENCODES: "weight"}),
                     go.Scatter(x=[0, 1], y=[1, 0], mode="lines", line=dict(width=4.0), meta={WIDTH_ENCODES: "weight"}),
                     go.Scatter(x=[0, 1], y=[1, 1], mode="lines", line=dict(width=1.0), meta="something else")])
    big = for_projector(fig.update_layout(height=300))
    assert [trace.line.width for trace in big.data] == [0.8, 4.0, 3]


def show_in_places():
    """A page that shows one long-titled figure in a column, in a container inside a column, in a
    container and an expander as wide as the page (said so, as the Encoder-decoder page says of
    its stacked maps: Streamlit tells a block's kind only through private API), and on the page."""
    import plotly.graph_objects as go
    import streamlit as st

    from app.widgets.figures import show

    def fig():
        return go.Figure().update_layout(title_text="Vanishing gradients: four cells, same task and budget", height=300)

    left, _ = st.columns(2)
    show(fig(), "column", left)
    show(fig(), "inside_a_column", left.container())
    show(fig(), "container", st.container(), narrow=False)
    show(fig(), "expander", st.expander("more"), narrow=False)
    show(fig(), "page")


def test_a_title_breaks_in_a_column_and_keeps_one_line_as_wide_as_the_page():
    """The Encoder-decoder page stacks its two maps in full-width containers for a long source: their
    titles were broken as if in half a page."""
    at = AppTest.from_function(show_in_places).run()
    assert not at.exception
    titles = [spec["layout"]["title"]["text"] for spec, _ in figures(at)]
    assert ["<br>" in title for title in titles] == [True, True, False, False, False]


def test_a_title_is_wrapped_by_the_characters_it_shows_not_its_markup():
    """"Free running: alignment α<sub>ti</sub>" shows 27 characters and fits half a page at 1024 px; counted
    with its tags, its α<sub>ti</sub> went onto a line of its own."""
    assert shown_length("Free running: alignment α<sub>ti</sub>") == 27 and shown_length("write '&lt;eos&gt;'") == 13
    fig = go.Figure().update_layout(title_text="Free running: alignment α<sub>ti</sub>")
    assert wrap_title(fig).layout.title.text == "Free running: alignment α<sub>ti</sub>"
    long = go.Figure().update_layout(title_text="Teacher forcing, its α<sub>ti</sub> and its c<sub>t</sub> over time")
    assert [shown_length(line) <= 34 for line in wrap_title(long).layout.title.text.split("<br>")] == [True, True]


def test_a_title_wrapped_twice_gets_room_for_its_lines_once_and_one_standing_on_the_plot_rises():
    """Presentation mode wraps a title for the page, show() again for a column: the second wrap
    counts only the lines it adds. A title standing on what is under it (yanchor bottom: the
    decoding step's, on its panels' titles) rises by its added lines, or plotly laid them on those."""
    title = "Decoding step t = 0: attend, read c<sub>0</sub>, write '&lt;eos&gt;'"  # shows 51 characters
    fig = go.Figure().update_layout(title=dict(text=title, yref="paper", y=1, yanchor="bottom", pad=dict(b=30),
                                               font=dict(size=21)), height=300, margin=dict(t=62))
    once = wrap_title(fig, chars=68)  # as for_projector: 48 characters of a 21 px title, then a column's 24
    twice = wrap_title(once)
    assert [len(f.layout.title.text.split("<br>")) for f in (once, twice)] == [2, 3]
    assert [f.layout.margin.t for f in (once, twice)] == [90, 118]  # 28 px a line of 21 px type
    assert [f.layout.height for f in (once, twice)] == [328, 356] and [f.layout.title.pad.b for f in (once, twice)] == [
        58, 86]
    plain = wrap_title(go.Figure().update_layout(title_text=title))
    assert plain.layout.title.pad.b is None  # a title in the margin, as plotly places it, keeps its place


def test_a_wrapped_legend_reserves_a_row_for_each_column_of_its_widest_entry():
    """Plotly lines a wrapped legend's entries up in columns as wide as its widest: four entries at
    230 px take four rows (drawn in chromium), though two of the names would share a row."""
    names = ["random", "frozen", "fine-tuned", "coin toss (50%)"]
    fig = go.Figure([go.Scatter(x=[0], y=[0], name=name) for name in names])
    assert legend_rows(fig, width=230) == 4
    assert legend_rows(fig, width=600) == 1  # 40 px and 0.55 x 12 px a character each: 412 px in one row
    assert legend_rows(fig, width=300) == 2  # two columns of the widest entry (139 px)
