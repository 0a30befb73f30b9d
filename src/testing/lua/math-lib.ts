/** Lua 5.1's math library (without random: Redis scripts must not depend on it). */
import { library } from "./args.js";

export function mathLibrary() {
  const lib = library({
    floor: (a) => [Math.floor(a.number(0))],
    ceil: (a) => [Math.ceil(a.number(0))],
    abs: (a) => [Math.abs(a.number(0))],
    sqrt: (a) => [Math.sqrt(a.number(0))],
    pow: (a) => [Math.pow(a.number(0), a.number(1))],
    exp: (a) => [Math.exp(a.number(0))],
    log: (a) => [Math.log(a.number(0))],
    log10: (a) => [Math.log10(a.number(0))],
    // C's fmod keeps the dividend's sign, as JavaScript's % does.
    fmod: (a) => [a.number(0) % a.number(1)],
    modf: (a) => {
      const x = a.number(0);
      const int = x >= 0 ? Math.floor(x) : Math.ceil(x);
      return [int, Number.isFinite(x) ? x - int : 0];
    },
    max: (a) => {
      let best = a.number(0);
      for (let i = 1; i < a.count; i++) {
        const x = a.number(i);
        if (x > best) best = x;
      }
      return [best];
    },
    min: (a) => {
      let best = a.number(0);
      for (let i = 1; i < a.count; i++) {
        const x = a.number(i);
        if (x < best) best = x;
      }
      return [best];
    },
  });
  lib.set("huge", Infinity);
  lib.set("pi", Math.PI);
  return lib;
}
