// Child process of kernels_isa.test.ts: runs a fixed set of conformance cases under the ISA forced by
// ZIGTENSOR_ISA and prints one JSON report (the exact-mode hash must agree across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { conformanceRun } from "../helpers/kernels_conformance.ts";
import { integerConformanceRun } from "../helpers/integer_conformance.ts";

const report = conformanceRun(20_000, 160);
const integer = integerConformanceRun(30_000, 80);
console.log(JSON.stringify({ isa: kernelInfo().isa, ...report, integer }));
