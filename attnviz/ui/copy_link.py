"""A link shown in full, wrapped, with a Copy button: the sidebar's "Link to this view".

The box is plain HTML (`st.html`) rather than `st.code`: a code box brings Streamlit's syntax highlighter, whose
script (every language it knows) the browser compiles and runs on every page load, for a box that highlights
nothing; without it a page load keeps the browser's main thread busy a fifth (the heatmap page) to nearly a third
(the home page) less (see docs/performance.md). The button's script (COPY_JS) is one listener on the document,
among the page's own scripts (ui.page)."""
from __future__ import annotations

import html

import streamlit as st

BOX = "attnviz-link"  # the box's class; its link is the text of its <code>

# Copies through the clipboard API where the page may use it (a secure page: localhost, 127.0.0.1, https), else by
# selecting the link in a hidden text box and copying the selection (a server on the network, as for a class).
COPY_JS = """<style>
.%(box)s { display: flex; align-items: flex-start; gap: 0.5rem; padding: 0.5rem 0.6rem; border-radius: 0.5rem;
  background: rgba(128, 128, 128, 0.1); }
.%(box)s code { flex: 1 1 auto; min-width: 0; font-size: 0.78rem; line-height: 1.4; white-space: pre-wrap;
  overflow-wrap: anywhere; background: none; padding: 0; }
.%(box)s button { flex: 0 0 auto; font: inherit; font-size: 0.78rem; padding: 0.15rem 0.5rem; cursor: pointer;
  border-radius: 0.4rem; border: 1px solid rgba(128, 128, 128, 0.45); background: transparent; color: inherit; }
</style>
<script>
(() => {
  if (window.__attnvizCopyLink) return;
  window.__attnvizCopyLink = true;
  const said = (button, ok) => {
    button.textContent = ok ? 'Copied' : 'Select and copy';
    clearTimeout(button.__attnvizTimer);
    button.__attnvizTimer = setTimeout(() => { button.textContent = 'Copy'; }, 1500);
  };
  const bySelection = (button, text) => {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.cssText = 'position: fixed; top: 0; left: 0; opacity: 0;';
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    area.remove();
    said(button, ok);
  };
  document.addEventListener('click', (event) => {
    const button = event.target.closest ? event.target.closest('.%(box)s button') : null;
    if (!button) return;
    const text = button.closest('.%(box)s').querySelector('code').textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(() => said(button, true), () => bySelection(button, text));
    } else {
      bySelection(button, text);
    }
  });
})();
</script>""" % {"box": BOX}


def copy_link(url: str) -> None:
    """Show `url` whole, wrapped, with a Copy button beside it."""
    st.html(f'<div class="{BOX}"><code>{html.escape(url)}</code>'
            '<button type="button" title="Copy the link">Copy</button></div>')
