"""The head atlas's figures: the similarity map names a head only where its name has room."""
import numpy as np


def test_the_similarity_map_names_only_the_heads_with_room_for_a_name():
    from attnviz.atlas.figures import LABEL_ROOM, head_scatter

    coords = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.5 + LABEL_ROOM / 2, 0.5]])
    fig = head_scatter(coords, np.zeros((1, 5), int), np.ones((1, 5)), n_heads=5)
    names = {tuple(d[:2]): t for tr in fig.data if tr.customdata is not None
             for d, t in zip(tr.customdata, tr.text)}
    assert names == {(0, 0): "0-0", (0, 1): "0-1", (0, 2): "0-2", (0, 3): "", (0, 4): ""}  # the close pair: hover only
    assert all("layer %{customdata[0]}, head %{customdata[1]}" in tr.hovertemplate for tr in fig.data if tr.customdata is not None)
