// ESLint: typescript-eslint's strict, type-checked rules over the console's sources. Generated code (src/gen) and
// build output are not linted.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "src/gen/"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Numbers and booleans in template strings read fine in messages.
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true, allowBoolean: true }],
      // An empty string is "not given" in proto3 messages: `a || b` over strings is what is meant.
      "@typescript-eslint/prefer-nullish-coalescing": ["error", { ignorePrimitives: { string: true } }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The browser runs (e2e/) are Node scripts that also hand functions to the page.
    files: ["e2e/**/*.mjs"],
    languageOptions: {
      globals: Object.fromEntries(
        ["process", "console", "URL", "window", "document", "navigator", "localStorage", "sessionStorage",
          "requestAnimationFrame", "getComputedStyle", "File", "DataTransfer", "Event"].map((name) => [name, "readonly"]),
      ),
    },
  },
);
