// ESLint for the extension (`npm run lint`, part of `make lint`): the recommended rules of
// ESLint and typescript-eslint, type-aware for the TypeScript (types from tsconfig.json).
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["client/out/**", "client/test/debug/fixtures/**"] },
  {
    files: ["client/**/*.ts"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's test() returns a promise the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it"] }] },
      ],
    },
  },
  {
    // The build, packaging and test-runner scripts: plain Node.js modules.
    files: ["client/**/*.mjs"],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
  },
);
