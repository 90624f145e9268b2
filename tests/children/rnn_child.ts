// Child process of nn_rnn_cell.test.ts: runs the recurrent cell kernel conformance cases under the ISA forced
// by ZIGTENSOR_ISA and prints one JSON report (the exact-mode hash must agree across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { rnnConformanceRun } from "../helpers/rnn_conformance.ts";

console.log(JSON.stringify({ isa: kernelInfo().isa, ...rnnConformanceRun(13, 80) }));
