// Child process of kernels_matmul.test.ts: the matmul conformance cases under the variant ZIGTENSOR_ISA forces;
// prints one JSON report line.
import { runConformance } from "../helpers/matmul_operands.ts";

console.log(JSON.stringify(runConformance(40, 99, [1, 2, 3, 4])));
