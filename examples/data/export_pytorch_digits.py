"""Trains the digits CNN of examples/digits_cnn_torch.py briefly in PyTorch and saves what
examples/load_pytorch.ts needs: the state_dict as safetensors (digits_cnn.safetensors, PyTorch's names) and
PyTorch's logits for the first 32 test images (digits_cnn_logits.json), which zigtensor must reproduce to f32
rounding after loading the weights by name.

Run: /work/pyref/bin/python examples/data/export_pytorch_digits.py
"""
import json
import os

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)
torch.set_num_threads(1)
meta = json.load(open(os.path.join(HERE, "digits.json")))
data = np.load(os.path.join(HERE, "digits.npz"))
images = torch.tensor(data["images"].reshape(-1, 1, 8, 8), dtype=torch.float32) / meta["maxValue"]
labels = torch.tensor(data["labels"], dtype=torch.int64)
train_x, train_y = images[: meta["train"]], labels[: meta["train"]]
test_x = images[meta["train"]: meta["train"] + 32]

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
    nn.MaxPool2d(2), nn.Flatten(),
    nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.25),
    nn.Linear(64, 10),
)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(5):
    model.train()
    order = torch.randperm(len(train_y))
    for b in range(0, len(order), 32):
        idx = order[b:b + 32]
        loss = nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
model.eval()
with torch.no_grad():
    logits = model(test_x)
save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(HERE, "digits_cnn.safetensors"),
          metadata={"model": "digits CNN of examples/digits_cnn.ts", "torch": torch.__version__})
with open(os.path.join(HERE, "digits_cnn_logits.json"), "w") as f:
    json.dump({"first": meta["train"], "count": 32, "shape": list(logits.shape),
               "logits": [float(str(v)) for v in logits.reshape(-1).numpy()]}, f)
print("saved", sorted(model.state_dict().keys()))
