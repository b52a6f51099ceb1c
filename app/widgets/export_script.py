"""The download of a standalone PyTorch script that reproduces the lab's run (engine.export_script),
with the text it reads when the run read one; or, for a run the script cannot reproduce yet, a
caption saying which setting stops it."""
from __future__ import annotations

import streamlit as st

from app.session.lab import Lab
from app.widgets.literal import literal
from engine.export_script import TEXT_NAME, check_exportable, reads_text, script_for, script_name, text_for

LABEL = "Download a PyTorch script that reproduces this run (.py)"
HELP = (
    "The task's data, the model class and the training loop in plain PyTorch, nothing of Unrolled: from the "
    "same seed it draws the same batches and starts from the same weights, so on the same PyTorch it prints the "
    "losses shown here. It trains from fresh weights with the settings as they are now."
)


def script_button(lab: Lab, where=st) -> None:
    """The script's download, made when clicked (from the lab's setup and upload as they are now:
    a Setup never changes, so no lock is taken), in `where` (st, a column, a container)."""
    setup, upload = lab.setup, lab.upload
    try:
        check_exportable(setup)
    except ValueError as err:
        where.caption(f"No PyTorch script for this run: {literal(err)}.")
        return
    where.download_button(LABEL, lambda: script_for(setup, upload), script_name(setup), mime="text/x-python",
                          help=HELP)
    if reads_text(setup):
        where.download_button(f"Download the text it reads ({TEXT_NAME})", lambda: text_for(setup, upload),
                              TEXT_NAME, mime="text/plain", help=f"run the script with --text {TEXT_NAME}")
    if lab.marks:  # settings changed (or weights put back) mid-run: the script knows only the settings of now
        step, change = lab.marks[0]
        where.caption(f"This run changed at step {step:,} ({change}): the script trains with the settings of now "
                      f"from fresh weights, so its losses follow this run's up to step {step:,} only.")
