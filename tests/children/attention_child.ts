// Child process of kernels_attention.test.ts: the fused attention conformance cases under the variant
// ZIGTENSOR_ISA forces; prints one JSON report line.
import { runAttentionConformance } from "../helpers/attention_conformance.ts";

console.log(JSON.stringify(runAttentionConformance(12, 23, [1, 2, 3, 4])));
