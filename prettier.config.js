// Prettier, set to the style the code already has: double quotes, semicolons, trailing commas,
// parentheses around every arrow parameter, lines up to 130 columns. `npm run format` rewrites
// files and `npm run format:check` lists the ones that differ; neither is part of `npm test` yet:
// the tree is formatted once, in a commit of its own.
export default {
  printWidth: 130,
  tabWidth: 2,
  semi: true,
  singleQuote: false,
  trailingComma: "all",
  arrowParens: "always",
  endOfLine: "lf",
};
