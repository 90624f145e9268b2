// Child process of nn_rnn_cell.test.ts: runs the recurrent cell and layer kernel (forward and backward) conformance cases
// under the ISA forced by ZIGTENSOR_ISA and prints one JSON report (the exact-mode hashes must agree across
// ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { rnnConformanceRun, rnnLayerConformanceRun } from "../helpers/rnn_conformance.ts";

console.log(JSON.stringify({
  isa: kernelInfo().isa,
  ...rnnConformanceRun(13, 80),
  layers: rnnLayerConformanceRun(17, 32),
}));
