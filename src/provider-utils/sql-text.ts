/**
 * What SQLite itself would find in a string of SQL before preparing it: how many statements it
 * holds and which parameters it numbers. The SQLite binding (libsql) prepares only the first
 * statement of a string, silently, and binds whatever values it is given; the checks of
 * `openSqlite` (sqlite.ts) use this to refuse what better-sqlite3 refused.
 */
export interface SqlText {
  /** Statements that are not empty (`;;` and comments alone are none). */
  statements: number;
  /** Per parameter index (1-based, so `names[i - 1]`): its name, `?NNN` included, or null for a bare `?`. */
  names: Array<string | null>;
  /** The first tokens of the first statement, comments left out, lower-cased, quoted names unquoted: `['pragma', 'main', '.', 'query_only', '=']`. */
  head: string[];
}

// Token classes and transitions of sqlite3_complete() (SQLite's complete.c): a statement ends at a
// semicolon, except inside CREATE [TEMP] TRIGGER ... END, whose body holds semicolons.
const SEMI = 0;
const WS = 1;
const OTHER = 2;
const EXPLAIN = 3;
const CREATE = 4;
const TEMP = 5;
const TRIGGER = 6;
const END = 7;
const TRANSITIONS: readonly (readonly number[])[] = [
  /* 0 INVALID */ [1, 0, 2, 3, 4, 2, 2, 2],
  /* 1 START   */ [1, 1, 2, 3, 4, 2, 2, 2],
  /* 2 NORMAL  */ [1, 2, 2, 2, 2, 2, 2, 2],
  /* 3 EXPLAIN */ [1, 3, 3, 2, 4, 2, 2, 2],
  /* 4 CREATE  */ [1, 4, 2, 2, 2, 4, 5, 2],
  /* 5 TRIGGER */ [6, 5, 5, 5, 5, 5, 5, 5],
  /* 6 SEMI    */ [6, 6, 5, 5, 5, 5, 5, 7],
  /* 7 END     */ [1, 7, 5, 5, 5, 5, 5, 5],
];
const KEYWORDS: Record<string, number> = {
  explain: EXPLAIN,
  create: CREATE,
  temp: TEMP,
  temporary: TEMP,
  trigger: TRIGGER,
  end: END,
};

/** SQLite's identifier characters: letters, digits, '_', '$' and every character past ASCII. */
const isIdChar = (c: string | undefined) =>
  c !== undefined && (/[A-Za-z0-9_$]/.test(c) || c.charCodeAt(0) > 0x7f);
const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r';
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const HEAD = 8;

/** A token as `head` holds it: lower-cased, a quoted one ('a', "a", `a`, [a]) unquoted. */
function headOf(token: string): string {
  const quote = token[0];
  if (quote === "'" || quote === '"' || quote === '`')
    return token
      .slice(1, token.endsWith(quote) && token.length > 1 ? -1 : undefined)
      .replaceAll(quote + quote, quote)
      .toLowerCase();
  if (quote === '[') return token.slice(1, token.endsWith(']') ? -1 : undefined).toLowerCase();
  return token.toLowerCase();
}

/** Counts the statements of `sql` and numbers its parameters as SQLite's parser does (sqlite3ExprAssignVarNumber). */
export function scanSql(sql: string): SqlText {
  const names: Array<string | null> = [];
  const head: string[] = [];
  const byName = new Map<string, number>();
  let state = 0;
  let statements = 0;
  const parameter = (token: string) => {
    if (token === '?') return void names.push(null);
    if (token[0] === '?') {
      const index = Number(token.slice(1));
      // SQLite refuses ?0 and huge numbers at prepare time; nothing to number here.
      if (!Number.isSafeInteger(index) || index < 1 || index > 32766) return;
      while (names.length < index) names.push(null);
      if (names[index - 1] === null && !byName.has(token)) names[index - 1] = token;
      byName.set(token, index);
      return;
    }
    if (byName.has(token)) return;
    names.push(token);
    byName.set(token, names.length);
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const start = i;
    let token = OTHER;
    if (c === ';') (token = SEMI), i++;
    else if (isSpace(c)) (token = WS), i++;
    else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
      token = WS;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
      token = WS;
    } else if (c === "'" || c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c;
      let j = i + 1;
      for (;;) {
        const end = sql.indexOf(close, j);
        if (end < 0) {
          j = sql.length;
          break;
        }
        // A quote doubled inside a string is one quote; brackets have no escape.
        if (close !== ']' && sql[end + 1] === close) j = end + 2;
        else {
          j = end + 1;
          break;
        }
      }
      i = j;
    } else if (c === '?') {
      let j = i + 1;
      while (isDigit(sql[j])) j++;
      parameter(sql.slice(i, j));
      i = j;
    } else if ((c === ':' || c === '@' || c === '$' || c === '#') && isIdChar(sql[i + 1])) {
      // A named parameter, with the Tcl forms SQLite also reads: $a::b and $a(x).
      let j = i + 1;
      for (;;) {
        if (isIdChar(sql[j])) j++;
        else if (sql[j] === ':' && sql[j + 1] === ':') j += 2;
        else if (sql[j] === '(') {
          while (j < sql.length && sql[j] !== ')' && !isSpace(sql[j])) j++;
          if (sql[j] === ')') j++;
          break;
        } else break;
      }
      parameter(sql.slice(i, j));
      i = j;
    } else if (isIdChar(c)) {
      let j = i + 1;
      while (isIdChar(sql[j])) j++;
      token = KEYWORDS[sql.slice(i, j).toLowerCase()] ?? OTHER;
      i = j;
    } else i++;
    if (token !== WS && token !== SEMI) {
      if (state <= 1) statements++;
      if (statements === 1 && head.length < HEAD) head.push(headOf(sql.slice(start, i)));
    }
    state = TRANSITIONS[state]![token]!;
  }
  return { statements, names, head };
}
