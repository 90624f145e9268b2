// Child process of kernels_conv.test.ts: the im2col/col2im and convolution-product conformance cases under the
// variant ZIGTENSOR_ISA forces; prints one JSON report line.
import { runConvConformance, runConvProductConformance } from "../helpers/conv_operands.ts";

const folds = runConvConformance(30, 77, [1, 2, 3, 4]);
const products = runConvProductConformance(20, 78, [1, 2, 3, 4], true);
console.log(JSON.stringify({
  isa: folds.isa,
  cases: folds.cases + products.cases,
  failures: [...folds.failures, ...products.failures],
}));
