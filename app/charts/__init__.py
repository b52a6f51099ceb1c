"""Figure builders: a Recording or a DataFrame in, a plotly Figure out, one module per subject.
No Streamlit here, so every figure can be tested against the recording and exported."""
