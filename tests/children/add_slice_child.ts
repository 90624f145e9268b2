// Child process of native_slice.test.ts: runs the add slice under the ISA forced by ZIGTENSOR_ISA.
import { kernelInfo } from "../../mod.ts";
import { addSlice } from "../helpers/add_slice.ts";

const results = [1, 7, 8, 15, 16, 17, 31, 33, 64, 1000, 70_001].map((n) => addSlice(n, n));
console.log(JSON.stringify({ isa: kernelInfo().isa, results }));
