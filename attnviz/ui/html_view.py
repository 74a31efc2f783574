"""HTML that the app builds itself from escaped text (the shaded texts), put into the page as it is.

st.html sanitises every piece of HTML in the browser (DOMPurify) on every run; a 512-token shaded text is about
84 kB of spans, which kept the page's main thread busy for a noticeable moment each time. The app's own
builders escape every token (heatmap.text_view), so their HTML goes through this component instead, which
sets it only when it changed."""
from __future__ import annotations

import streamlit as st

_JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  let box = parentElement.querySelector(':scope > .attnviz-html');
  if (!box) {
    box = document.createElement('div');
    box.className = 'attnviz-html';
    // laid out and painted only while in or near the window (a 512-token text is about a thousand spans); until
    // it has been shown once it stands in at 200 px, then at the height it last had
    box.style.contentVisibility = 'auto';
    box.style.containIntrinsicSize = 'auto 200px';
    parentElement.appendChild(box);
  }
  if (box.__attnvizHtml !== data) {
    box.innerHTML = data;
    box.__attnvizHtml = data;
  }
}
"""

NAME = "attnviz_html"
_component = st.components.v2.component(NAME, js=_JS, isolate_styles=False)


def show_html(markup: str, key: str) -> None:
    """Put `markup` (built by the app, every text in it escaped) into the page, in an element with the class
    st-key-<key>. Without a browser (AppTest) it goes through st.html, which shows the same."""
    from attnviz.ui.plotly_bytes import available

    if available():
        _component(data=markup, key=key, width="stretch", height="content")
    else:
        st.html(markup)
