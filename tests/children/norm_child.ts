// Child process of kernels_norm.test.ts: the layer normalization conformance cases under the variant
// ZIGTENSOR_ISA forces; prints one JSON report line.
import { runNormConformance } from "../helpers/norm_conformance.ts";

console.log(JSON.stringify(runNormConformance(40, 91, [1, 2, 3, 4])));
