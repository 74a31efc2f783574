"""A class on the app at once: a load generator that speaks Streamlit's websocket protocol, and replicas behind nginx.

This folder imports `streamlit.proto` (the wire format) and nothing else from streamlit."""
