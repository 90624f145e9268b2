// Child process of nn_class_losses.test.ts: runs the class-loss kernel conformance cases under the ISA forced
// by ZIGTENSOR_ISA and prints one JSON report (the exact-mode hash must agree across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { nllConformanceRun } from "../helpers/nll_conformance.ts";

console.log(JSON.stringify({ isa: kernelInfo().isa, ...nllConformanceRun(23, 80) }));
