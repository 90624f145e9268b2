// Child process of nn_ctc.test.ts: runs the CTC kernel conformance cases under the ISA forced by
// ZIGTENSOR_ISA and prints one JSON report (the exact-mode hash must agree across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { ctcConformanceRun } from "../helpers/ctc_conformance.ts";

console.log(JSON.stringify({ isa: kernelInfo().isa, ...ctcConformanceRun(11, 60) }));
