// `node --import ./test/support/hide-packages.mjs`: the packages named in SEARCHER_RL_HIDE_PACKAGES
// (comma-separated) cannot be found, as on a machine where they are not installed; for the CLI's
// tests of missing optional packages.
import { register } from 'node:module';

const hidden = (process.env.SEARCHER_RL_HIDE_PACKAGES ?? '').split(',').filter((name) => name !== '');
register('./hide-packages-hooks.mjs', import.meta.url, { data: { hidden } });
