"""What one student's session holds, with no Streamlit in it: the lab (task, model, trainer), its
playback, its probes, the link codec and the lessons. Tested without a browser."""
