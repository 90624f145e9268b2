// Child process of kernels_conv.test.ts: the im2col/col2im conformance cases under the variant ZIGTENSOR_ISA
// forces; prints one JSON report line.
import { runConvConformance } from "../helpers/conv_operands.ts";

console.log(JSON.stringify(runConvConformance(30, 77, [1, 2, 3, 4])));
