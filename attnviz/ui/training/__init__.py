"""The Training evolution page's Streamlit parts, one module per section: state (the session's runs, stack
names), live (the background training job and its live panel), evolution (scrubbing a recorded run) and
sources (the controls of each source: toy task, fine-tuning, checkpoint series)."""
