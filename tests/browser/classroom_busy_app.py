"""A tiny Streamlit app for the busy-gate test: one slow page run through attnviz.ui.busy with room for one run."""
import time

import streamlit as st

from attnviz.ui import busy

busy.GATE.limit = 1


def page():
    time.sleep(float(st.query_params.get("sleep", "1.5")))  # a heavy computation
    st.markdown("page ran")


busy.run(page, wait=float(st.query_params.get("wait", "60")))
