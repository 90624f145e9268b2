"""The model of examples/digits_cnn.ts trained by PyTorch on the same data, split, optimizer, schedule, batch
size and epochs, for a comparison of accuracy and time (CPU).

Run: /work/pyref/bin/python examples/digits_cnn_torch.py [threads]
"""
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

EPOCHS = 15
BATCH = 32
HERE = os.path.dirname(os.path.abspath(__file__))

if len(sys.argv) > 1:
    torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
meta = json.load(open(os.path.join(HERE, "data", "digits.json")))
data = np.load(os.path.join(HERE, "data", "digits.npz"))
images = torch.tensor(data["images"].reshape(-1, 1, meta["height"], meta["width"]),
                      dtype=torch.float32) / meta["maxValue"]
labels = torch.tensor(data["labels"], dtype=torch.int64)
train_x, test_x = images[: meta["train"]], images[meta["train"]:]
train_y, test_y = labels[: meta["train"]], labels[meta["train"]:]

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
    nn.MaxPool2d(2), nn.Flatten(),
    nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.25),
    nn.Linear(64, 10),
)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
batches = (len(train_y) + BATCH - 1) // BATCH
schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS * batches)
start = time.perf_counter()
for epoch in range(EPOCHS):
    model.train()
    order = torch.randperm(len(train_y))
    for b in range(batches):
        idx = order[b * BATCH:(b + 1) * BATCH]
        loss = nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    print(f"epoch {epoch + 1} loss {loss.item():.4f}")
seconds = time.perf_counter() - start
model.eval()
with torch.no_grad():
    train_acc = (model(train_x).argmax(1) == train_y).float().mean().item()
    test_acc = (model(test_x).argmax(1) == test_y).float().mean().item()
print(f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads): train accuracy {100 * train_acc:.2f} %, "
      f"test accuracy {100 * test_acc:.2f} %, {seconds:.1f} s for {EPOCHS} epochs "
      f"({EPOCHS * batches / seconds:.0f} steps/s)")
