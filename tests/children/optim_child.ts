// Child process of optim.test.ts: runs the optimizer kernel conformance cases under the ISA forced by
// ZIGTENSOR_ISA and prints one JSON report (the exact-mode hash must agree across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { optimConformanceRun } from "../helpers/optim_conformance.ts";

console.log(JSON.stringify({ isa: kernelInfo().isa, ...optimConformanceRun(7, 40) }));
