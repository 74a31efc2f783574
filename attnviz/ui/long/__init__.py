"""The Long inputs page's Streamlit parts, one module per section: inputs (the model, the text from the sidebar, a
file or the bundled one, the length with its memory), recording (the background job and the Recording it keeps),
views (over a recording: the pooled all-heads grid grouped by key/value head, one head pooled with an exact zoom,
token focus over the whole text, top-k lines, distance profiles, sink mass, the sliding-window pattern) and
sinks (the live attention-sink experiment)."""
