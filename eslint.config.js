// Lint for the whole workspace: typescript-eslint's recommended type-aware
// rules, plus Nx's module-boundary rule, which turns the dependency direction
// of docs/architecture.md (cli -> operators -> mysql -> core) into a checked fact.
import js from "@eslint/js";
import nx from "@nx/eslint-plugin";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", ".stateward/**", ".nx/**", "e2e/tools/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@nx": nx },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@nx/enforce-module-boundaries": [
        "error",
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: "scope:core", onlyDependOnLibsWithTags: ["scope:core"] },
            { sourceTag: "scope:mysql", onlyDependOnLibsWithTags: ["scope:core", "scope:mysql"] },
            { sourceTag: "scope:operator", onlyDependOnLibsWithTags: ["scope:core", "scope:mysql"] },
            { sourceTag: "scope:cli", onlyDependOnLibsWithTags: ["scope:core", "scope:mysql", "scope:operator"] },
            { sourceTag: "scope:e2e", onlyDependOnLibsWithTags: ["*"] },
          ],
        },
      ],
    },
  },
  {
    // Inside mysql-backup the storage layer sits below the engine: the engine
    // and the restore write through it, it knows nothing of dumps (the errors
    // both throw live at the package root, src/errors.ts).
    files: ["operators/mysql-backup/src/storage/**"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ group: ["**/engine", "**/engine/**"], message: "storage/ must not depend on engine/; shared code goes to the package root (e.g. src/errors.ts)." }] }],
    },
  },
  {
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
  },
);
