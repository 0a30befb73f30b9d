// redlock 5.0.0-beta.2 (installed under the alias "redlock5"); `using()` extends the lock
// `automaticExtensionThreshold` (500 ms) before it expires.
import Redlock from "redlock5";
import { redlockFamily } from "./redlock-family.mjs";

export const { variants, create } = redlockFamily(Redlock, "redlock 5 beta");
