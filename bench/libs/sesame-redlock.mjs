// @sesamecare-oss/redlock, the maintained fork of redlock 5 for ioredis 5.
import { Redlock } from "@sesamecare-oss/redlock";
import { redlockFamily } from "./redlock-family.mjs";

export const { variants, create } = redlockFamily(Redlock, "@sesamecare-oss/redlock");
