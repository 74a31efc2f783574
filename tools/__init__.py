"""Tools beside the app, not part of it: a class simulated over Streamlit's websocket protocol, replicas behind nginx."""
