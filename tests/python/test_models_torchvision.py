"""torchvision's models through torch.compile(backend="aotcache") with default
options (downloaded.py): trained cold, then warm in a new process, equal to
eager at every step (downloaded_training.check_cold_then_warm)."""

import pytest
import torch

import downloaded
from downloaded_training import check_cold_then_warm

if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs torch 2", allow_module_level=True)
if "tv_swin_t" not in downloaded.available():
    pytest.skip("torchvision does not import here (scripts/test-torch2 installs it)",
                allow_module_level=True)


@pytest.mark.parametrize("name", ["tv_swin_t", "tv_mobilenet_v3_small"])
def test_trains_cold_then_warm_as_eager(daemon, tmp_path, name):
    check_cold_then_warm(name, daemon, tmp_path)
