// Child process of op_conformance.test.ts: walks the op registry under the ISA forced by ZIGTENSOR_ISA and
// prints one JSON report (the exact-mode hash must agree across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { opConformanceRun } from "../helpers/op_conformance.ts";

console.log(JSON.stringify({ isa: kernelInfo().isa, ...opConformanceRun(11) }));
