// The `surelock` executable: runs the command line (cli.ts) and exits with its code.
import { main } from "./cli.js";

const code = await main(process.argv.slice(2), process.env);
process.exitCode = code;
// Whatever might still be open (a socket closing slowly) must not keep the command alive.
setTimeout(() => process.exit(code), 2_000).unref();
