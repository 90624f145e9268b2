// The UCI digits as the examples read them (examples/data/digits.npz, written once by
// examples/data/export_digits.py; the split in digits.json) and the CNN that digits_cnn.ts trains,
// load_pytorch.ts loads and digits_cnn_torch.py builds in PyTorch.
import { readFileSync } from "node:fs";
import { ActivationScope, DType, io, nn, type Tensor } from "../mod.ts";

/** What examples/data/digits.json says of the data. */
export interface DigitsMeta {
  count: number;
  height: number;
  width: number;
  maxValue: number;
  classes: number;
  /** The first `train` digits train; the rest test. */
  train: number;
}

/** The counts and the train/test split. */
export function readMeta(): DigitsMeta {
  return JSON.parse(readFileSync(new URL("./data/digits.json", import.meta.url), "utf8")) as DigitsMeta;
}

/** Pixels scaled to [0, 1] as [N, 1, 8, 8] F32 (owned by the caller), and labels, for rows `first … end`. */
export function digits(meta: DigitsMeta, first: number, end: number): { images: Tensor; labels: Int32Array } {
  using data = io.readNpz(new URL("./data/digits.npz", import.meta.url));
  using _scope = new ActivationScope();
  const images = data.get("images")!.slice(0, first, end).cast(DType.F32).div(meta.maxValue);
  const labels = Int32Array.from(data.get("labels")!.slice(0, first, end).toArray() as Uint8Array);
  return { images: ActivationScope.keep(images.reshape([end - first, 1, meta.height, meta.width])), labels };
}

/** The CNN; its state dict keys are PyTorch's for the same nn.Sequential ("0.weight", ..., "9.bias"). */
export function digitsModel(): nn.Sequential {
  return new nn.Sequential(
    new nn.Conv2d(1, 16, 3, { padding: 1 }),
    new nn.ReLU(),
    new nn.Conv2d(16, 32, 3, { padding: 1 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(32 * 4 * 4, 64),
    new nn.ReLU(),
    new nn.Dropout(0.25),
    new nn.Linear(64, 10),
  );
}
