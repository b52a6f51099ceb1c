"""The Streamlit parts every page shares: session-state keys, the page header, the part picker,
the training controls, the settings form and the downloads."""
