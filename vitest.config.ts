import { configDefaults, defineConfig } from 'vitest/config';

// Two projects over the same files: `unit` (npm test: every module's tests, minutes at most) and
// `e2e` (npm run test:e2e: the files named *.e2e.test.ts, whole training runs, CLI runs of the
// examples and the ICD flow, SmolLM2). .ci/run runs both. `npx vitest run <file>` runs a file of
// either project.
const e2e = ['src/**/*.e2e.test.ts', 'test/**/*.e2e.test.ts'];

export default defineConfig({
  test: {
    environment: 'node',
    testTimeout: 30_000,
    // vitest's default is one worker less than the cores, a single worker on 2 cores; many files
    // wait on child processes, servers and disk, so two keep both cores busy.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...e2e],
        },
      },
      {
        extends: true,
        test: { name: 'e2e', include: e2e },
      },
    ],
  },
});
