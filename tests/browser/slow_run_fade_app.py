"""A tiny Streamlit app for the slow-run fade's test: the app's fade script (ui.page.FADE_SLOW_RUNS), a few lines,
and a button whose run lasts `sleep` seconds (a quick run or a slow one)."""
import time

import streamlit as st

from attnviz.ui.page import FADE_SLOW_RUNS

with st.container(key="page_scripts"):
    st.html(FADE_SLOW_RUNS, unsafe_allow_javascript=True)
st.markdown("First line")
if st.button("Run", key="fade_run"):
    time.sleep(float(st.query_params.get("sleep", "2")))
st.markdown("Last line")
