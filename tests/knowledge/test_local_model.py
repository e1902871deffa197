from __future__ import annotations

from pathlib import Path

import pytest

from host.local_model import assemble_minilm


@pytest.mark.parametrize("target", ["", "."])
def test_the_model_folder_helper_refuses_the_current_folder(target):
    with pytest.raises(ValueError, match="dedicated folder"):
        assemble_minilm(Path(target))
    assert not (Path.cwd() / "model.onnx").exists()
