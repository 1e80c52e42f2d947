// A TypeDoc plugin (typedoc.json): each entry point's module is named by the import path a user
// writes (`searcher-rl/mock`), from package.json's exports map, instead of its folder under src/.
import { readFileSync } from 'node:fs';
import { Converter, ReflectionKind } from 'typedoc';

/** `adapters/mock` (TypeDoc's name: the entry's path under src/) -> `searcher-rl/mock`. */
function importPathsByModuleName() {
  const { exports } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const names = new Map();
  for (const [key, value] of Object.entries(exports)) {
    if (typeof value !== 'object') continue;
    const source = value.types.replace('./dist/', '').replace(/(\/index)?\.d\.ts$/, '');
    names.set(source, key === '.' ? 'searcher-rl' : `searcher-rl/${key.slice(2)}`);
  }
  return names;
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  const names = importPathsByModuleName();
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getChildrenByKind(ReflectionKind.Module)) {
      const name = names.get(module.name);
      if (name) module.name = name;
    }
  });
}
