"""A tiny Streamlit app for the wait helper's test: it draws its heading, then computes for a few seconds
before its last line."""
import time

import streamlit as st

st.title("A slow page")
time.sleep(float(st.query_params.get("sleep", "5")))  # a computation after the first element is on screen
st.markdown("The last line")
