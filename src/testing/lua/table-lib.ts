/** Lua 5.1's table library. */
import { library } from "./args.js";
import { number2string } from "./number.js";
import { typeOf, type LuaValue } from "./values.js";

export function tableLibrary() {
  return library({
    insert: (a) => {
      const t = a.table(0);
      let end = t.length() + 1;
      if (a.count === 2) {
        t.set(end, a.values[1]);
        return [];
      }
      if (a.count !== 3) throw a.error("wrong number of arguments to 'insert'");
      const pos = a.integer(1);
      if (pos > end) end = pos;
      for (let i = end; i > pos; i--) t.set(i, t.get(i - 1));
      t.set(pos, a.values[2]);
      return [];
    },
    remove: (a) => {
      const t = a.table(0);
      const end = t.length();
      const pos = a.optInteger(1, end);
      if (!(pos >= 1 && pos <= end)) return [];
      const removed = t.get(pos);
      for (let i = pos; i < end; i++) t.set(i, t.get(i + 1));
      t.set(end, undefined);
      return [removed];
    },
    concat: (a) => {
      const t = a.table(0);
      const sep = a.optString(1, "");
      const first = a.optInteger(2, 1);
      const last = a.values[3] === undefined ? t.length() : a.integer(3);
      const parts: string[] = [];
      for (let i = first; i <= last; i++) {
        const v = t.get(i);
        if (typeof v === "string") parts.push(v);
        else if (typeof v === "number") parts.push(number2string(v));
        else throw a.error(`invalid value (${typeOf(v)}) at index ${i} in table for 'concat'`);
      }
      return [parts.join(sep)];
    },
    sort: (a, rt) => {
      const t = a.table(0);
      const comp = a.values[1];
      if (comp !== undefined) a.function(1);
      const n = t.length();
      const items: LuaValue[] = [];
      for (let i = 1; i <= n; i++) items.push(t.get(i));
      // Lua's quicksort is not stable either: callers cannot rely on the order of equal items.
      const less = (x: LuaValue, y: LuaValue): boolean => {
        if (comp === undefined) return rt.lessThan(x, y);
        const r = rt.call(comp, [x, y])[0];
        return r !== undefined && r !== false;
      };
      items.sort((x, y) => (less(x, y) ? -1 : less(y, x) ? 1 : 0));
      items.forEach((v, i) => t.set(i + 1, v));
      return [];
    },
    getn: (a) => [a.table(0).length()],
    maxn: (a) => [a.table(0).maxn()],
  });
}
