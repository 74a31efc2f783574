"""Widgets of the Vision page (attention over image patches) and the vision transformer's task on the Training
page: which model, which image, then every view drawn over the image."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.ui import cache
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import clicked_head
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.vision import figures
from attnviz.vision.patches import PatchGrid, attention_distance, position_similarity, read_image
from attnviz.vision.views import cls_grid, head_row, patch_flow, patch_rollout

SOURCES = ["Trained here", "ViT from a folder"]
IMAGES = ["Held-out image", "Upload"]
TRAINED_RUN = "training_vision"  # (Run, frame) stored by "Use this step on the other pages" on the Training page
TRAINING_SLOT = "vision"  # the Training page's run slot of the vision transformer
FUSIONS = ["mean", "max", "min"]


@dataclass(frozen=True)
class Subject:
    """What the views draw: one image, the model's attention on it, and how to read the tokens."""

    image: np.ndarray  # float32 (C, H, W) in [0, 1], as the model read it
    attention: np.ndarray  # float32 (layer, head, T, T)
    grid: PatchGrid  # how the image is cut into patches
    n_prefix: int  # tokens before the patches ([CLS], DeiT's [DIST])
    tokens: tuple[str, ...]  # token labels
    positions: np.ndarray | None  # (n_patches, d) learned position embeddings, when readable
    caption: str  # the model and the image, one line


# ------------------------------------------------------------------ the Training page's task

def use_step(run, frame: int) -> None:
    """'Use this step on the other pages' for a vision run: the Vision page opens this model at this step."""
    st.session_state[TRAINED_RUN] = (run, int(frame))


def training_controls(start, job_of, runs) -> str:
    """The vision transformer's settings and Train button on the Training page; returns its run slot.
    start / job_of / runs: the Training page's job starter, running-job lookup and run store."""
    from attnviz.vision.data import IMAGE_SETS
    from attnviz.vision.train import VitTrainConfig, train_vit

    slot = TRAINING_SLOT
    d = VitTrainConfig()
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    images = c1.selectbox("Images", list(IMAGE_SETS), format_func=lambda k: IMAGE_SETS[k].title, key="tr_vit_images")
    steps = number_box(c2, "Steps", 20, 3000, d.steps, step=50, key="tr_vit_steps")
    layers = number_box(c3, "Layers", 1, 6, 2, key="tr_vit_layers")
    seed = number_box(c4, "Seed", 0, 10_000, d.seed, key="tr_vit_seed")
    st.caption("A vision transformer: each 16 x 16 image is cut into 16 patches of 4 x 4 pixels, each patch becomes a "
               "token, a [CLS] token is put in front and reads out the class. " + IMAGE_SETS[images].expect)
    if st.button("▶ Train the vision transformer", type="primary", key="tr_vit_train", disabled=job_of(slot) is not None):
        from attnviz.vision.model import VitConfig

        try:
            config = VitTrainConfig(images=images, steps=int(steps), seed=int(seed),
                                    model=VitConfig(n_layers=int(layers), seed=int(seed)))
        except AttnvizError as e:
            st.warning(str(e))
            return slot
        from attnviz.vision.model import patch_tokens

        grid = config.model_config().grid
        start(slot, lambda cb, cancel: train_vit(config, callback=cb, cancel=cancel), "training",
              {"src": patch_tokens(grid.n, grid.cols), "dec": None})
        st.session_state["tr_frame"] = 0
        st.rerun()
    if slot not in runs() and job_of(slot) is None and cache.recorded("vision") is not None:
        runs()[slot] = cache.recorded("vision")
    return slot


# ------------------------------------------------------------------ the Vision page

def _trained_run():
    """(run, frame, where it comes from) of the vision transformer trained here."""
    kept = st.session_state.get(TRAINED_RUN)
    if kept is not None:
        return kept[0], kept[1], "the step chosen on the Training page"
    run = cache.recorded("vision")
    if run is None:
        return None, 0, ""
    return run, run.n_frames - 1, "the run shipped with attnviz; train your own on the Training page"


def _upload(key: str, channels: int, size: tuple[int, int], invert: bool) -> np.ndarray | None:
    up = st.file_uploader("An image (PNG or JPEG)", key=key, help="Any size: it is converted and resized to what "
                          "the model reads, and the page says how.")
    if up is None:
        st.info("Upload an image to see the model's attention on it.")
        return None
    try:
        read = read_image(up.getvalue(), up.name, size, channels, invert_light=invert)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    for note in read.notes:
        st.caption(note)
    return read.pixels


def _heldout(images_name: str, size: tuple[int, int], channels: int) -> np.ndarray:
    """A held-out image of the set, converted to the model's size and channels."""
    from PIL import Image

    from attnviz.vision.data import image_set

    _, _, x_held, y_held = image_set(images_name).split(0)
    n = len(y_held)
    st.session_state.setdefault("vi_index", 0)
    i = int(number_box(st.columns([1, 2])[0], f"Held-out image (0-{n - 1})", 0, n - 1, key="vi_index"))
    img = x_held[i]
    if img.shape[1:] != size:
        img = np.asarray(Image.fromarray(img[0], mode="F").resize(size[::-1], Image.Resampling.BILINEAR))[None]
    if channels == 3 and img.shape[0] == 1:
        img = np.repeat(img, 3, axis=0)
    st.caption(f"True label: {image_set(images_name).classes[int(y_held[i])]}.")
    return np.clip(img, 0, 1).astype(np.float32)


def subject() -> Subject | None:
    """The model and the image chosen on the page, and the attention on it (None after a plain message)."""
    bind({"vi_source": str, "vi_image": str, "vi_index": int, "vi_folder": str})
    kept = st.session_state.get(TRAINED_RUN)
    if kept is not None and st.session_state.get("_vi_kept") != id(kept):  # a step just chosen: show it
        st.session_state["_vi_kept"] = id(kept)
        st.session_state["vi_source"] = SOURCES[0]
    for key, options in (("vi_source", SOURCES), ("vi_image", IMAGES)):
        if st.session_state.get(key) not in options:
            st.session_state[key] = options[0]
    c1, c2 = st.columns(2)
    source = c1.segmented_control("Model", SOURCES, key="vi_source") or SOURCES[0]
    which = c2.segmented_control("Image", IMAGES, key="vi_image") or IMAGES[0]
    try:
        if source == SOURCES[0]:
            return _trained_subject(which)
        return _folder_subject(which)
    except AttnvizError as e:
        st.warning(str(e))
        return None


def _trained_subject(which: str) -> Subject | None:
    from attnviz.vision.model import patch_tokens
    from attnviz.vision.train import image_attention, vit_from_run

    run, frame, where = _trained_run()
    if run is None:
        st.info("No vision transformer yet: train one on the Training page (What to watch: Images (ViT)).")
        return None
    model = vit_from_run(run)
    cfg = model.cfg
    size = (cfg.image_size, cfg.image_size)
    image = _heldout(run.meta["images"], size, cfg.channels) if which == IMAGES[0] else \
        _upload("vi_upload", cfg.channels, size, invert=True)
    if image is None:
        return None
    att = image_attention(model, image)["self"]
    from attnviz.vision.train import predict

    guess = run.meta["classes"][int(predict(model, image[None])[0])]
    acc = run.meta.get("final_accuracy")
    st.session_state["_vi_frame_default"] = frame
    return Subject(image, att, cfg.grid, 1, patch_tokens(cfg.grid.n, cfg.grid.cols), model.position_table(),
                   f"Vision transformer trained here: {where} · held-out accuracy {acc:.1%} · "
                   f"{cfg.n_layers} layers × {cfg.n_heads} heads · the model says: **{guess}**")


def _folder_subject(which: str) -> Subject | None:
    from attnviz.vision.hf import hf_attention, position_table

    folder = st.text_input("Folder of a ViT or DeiT model (or a hub id in the local HuggingFace cache)",
                           key="vi_folder", placeholder="/path/to/vit-model")
    if not folder.strip():
        st.info("Type the folder of a ViT or DeiT model saved with save_pretrained.")
        return None
    vm = cache.vision_model(folder.strip())
    size = (vm.grid.height, vm.grid.width)
    image = _heldout("digits", size, vm.channels) if which == IMAGES[0] else \
        _upload("vi_upload_hf", vm.channels, size, invert=False)
    if image is None:
        return None
    att = hf_attention(vm, image)
    f = vm.loaded.facts
    return Subject(image, att, vm.grid, vm.n_prefix, vm.tokens, position_table(vm),
                   f"{f.architecture} from {f.source} · {f.n_layers} layers × {f.n_heads} heads · "
                   f"{vm.grid.n} patches of {vm.grid.patch} × {vm.grid.patch} pixels")


def heads_view(s: Subject) -> None:
    """The layers x heads grid of [CLS] overlays (click a head to open it) and the open head, whose query is
    [CLS] or any patch clicked."""
    n_l, n_h = s.attention.shape[:2]
    hit = clicked_head("vi_grid")
    if hit is not None:
        st.session_state["vi_layer"], st.session_state["vi_head"] = hit
    bind({"vi_layer": int, "vi_head": int, "vi_query": int})
    layer = min(max(int(st.session_state.get("vi_layer", n_l - 1)), 0), n_l - 1)
    head = min(max(int(st.session_state.get("vi_head", 0)), 0), n_h - 1)
    st.session_state["vi_layer"], st.session_state["vi_head"] = layer, head
    left, right = st.columns([3, 2])
    with left:
        fig = figures.grid_figure(s.image, cls_grid(s.attention, s.n_prefix), s.grid, selected=(layer, head),
                                  title="Every head: where [CLS] looks (click a head to open it)")
        show_figure(fig, key="vi_grid", on_select="rerun", selection_mode="points")
    with right:
        c1, c2 = st.columns(2)
        c1.selectbox("Layer", list(range(n_l)), key="vi_layer")
        c2.selectbox("Head", list(range(n_h)), key="vi_head")
        query = _clicked_patch(s)
        name = s.tokens[query]
        fig = figures.overlay_figure(s.image, head_row(s.attention, layer, head, query, s.n_prefix), s.grid,
                                     f"Layer {layer}, head {head}: where {name} looks",
                                     query=None if query < s.n_prefix else query - s.n_prefix)
        show_figure(fig, key="vi_head_map", on_select="rerun", selection_mode="points")
        own = float(s.attention[layer, head, query, :s.n_prefix].sum())
        st.caption(f"Brighter patches get more of {name}'s attention (scaled to the largest). Click a patch to "
                   f"look from it instead. The weight {name} keeps on the first token(s) ({', '.join(s.tokens[:s.n_prefix])}) "
                   f"is {own:.3f}, not drawn.")
        if query != 0:
            st.button("Look from [CLS] again", key="vi_back", on_click=_set_query, args=(0,))


def _set_query(q: int) -> None:
    st.session_state["vi_query"] = q


def _clicked_patch(s: Subject) -> int:
    """The token whose row the open head shows: [CLS], or the patch clicked last (a new click wins)."""
    state = st.session_state.get("vi_head_map")
    points = []
    if state is not None:
        sel = state.get("selection", {}) if hasattr(state, "get") else {}
        points = sel.get("points", []) if hasattr(sel, "get") else []
    current = tuple(int(p.get("point_index", -1)) for p in points)
    if points and st.session_state.get("_vi_seen") != current:
        st.session_state["vi_query"] = s.n_prefix + current[0]
    st.session_state["_vi_seen"] = current
    q = int(st.session_state.get("vi_query", 0))
    if not 0 <= q < len(s.tokens):
        q = 0
    st.session_state["vi_query"] = q
    return q


def rollout_view(s: Subject) -> None:
    """Rollout and attention flow from [CLS] to the patches, with vit-explain's head fusion and discard ratio."""
    bind({"vi_fusion": str, "vi_discard": float})
    if st.session_state.get("vi_fusion") not in FUSIONS:
        st.session_state["vi_fusion"] = "mean"
    c1, c2, c3 = st.columns(3)
    fusion = c1.segmented_control("Head fusion", FUSIONS, key="vi_fusion") or "mean"
    st.session_state.setdefault("vi_discard", 0.0)
    discard = c2.slider("Discard ratio", 0.0, 0.95, step=0.05, key="vi_discard",
                        help="The weakest share of each layer's fused weights is dropped before the product "
                             "([CLS]'s column never is), as vit-explain does.")
    residual = c3.slider("Residual weight", 0.0, 1.0, 0.5, 0.1, key="vi_residual",
                         help="Rollout adds this much identity to each layer (the skip connection).")
    args = dict(head_fusion=fusion, residual=residual, discard_ratio=discard, n_prefix=s.n_prefix)
    left, right = st.columns(2)
    with left:
        show_figure(figures.overlay_figure(s.image, patch_rollout(s.attention, **args), s.grid,
                                           "Rollout: each patch's share in [CLS] after the last layer",
                                           what="share"), key="vi_rollout")
    with right:
        try:
            flow = patch_flow(s.attention, **args)
        except AttnvizError as e:
            st.info(str(e))
        else:
            show_figure(figures.overlay_figure(s.image, flow, s.grid, "Attention flow from [CLS] to each patch",
                                               what="share of the flow"), key="vi_flow")


def depth_view(s: Subject) -> None:
    """Attention distance per head against depth, and the similarity of the position embeddings."""
    left, right = st.columns(2)
    with left:
        show_figure(figures.distance_figure(attention_distance(s.attention, s.grid, s.n_prefix), s.grid.patch),
                    key="vi_distance")
        st.caption("For each head, the distance between a patch and the patches it looks at, weighted by the "
                   "attention and averaged over the patches (the ViT paper's Figure 7). Local heads sit low, "
                   "global heads high; in the paper early layers hold both and later layers only global ones.")
    with right:
        if s.positions is None:
            st.info("This model's position embeddings could not be read, so their similarity is not shown.")
        else:
            show_figure(figures.position_figure(position_similarity(s.positions), s.grid), key="vi_positions")
            st.caption("Tile (r, c) shows how similar patch (r, c)'s learned position embedding is to every other "
                       "patch's: a model that learned the 2-D layout shows a bright spot around the tile's own place "
                       "and bright rows and columns through it.")


def snapshots_view() -> None:
    """The trained model's [CLS] attention on the probe image at each snapshot of its training."""
    run, frame, _ = _trained_run()
    if run is None or run.meta.get("task") != "vision":
        return
    from attnviz.vision.model import VitConfig

    cfg = VitConfig(**run.meta["vit"])
    probe = np.asarray(run.meta["probe"], dtype=np.float32)
    bind({"vi_frame": int})
    n = run.n_frames
    st.session_state["vi_frame"] = min(max(int(st.session_state.get("vi_frame", frame)), 0), n - 1)
    f = st.select_slider("Training step", options=list(range(n)), format_func=lambda i: run.frame_labels[i],
                         key="vi_frame") if n > 1 else 0
    a = run.attention["self"][f]  # (layer, head, T, T)
    acc = run.frame_accuracy[f]
    title = f"{run.frame_labels[f]}: [CLS] in the last layer, mean of heads" + (
        "" if not np.isfinite(acc) else f" (held-out accuracy {acc:.0%})")
    show_figure(figures.overlay_figure(probe, head_row(a, a.shape[0] - 1, None, 0), cfg.grid, title),
                key="vi_snapshot")
