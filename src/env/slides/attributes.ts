import type { Random } from '../../core/random';

// The slide corpus's words: organisation syllables, cities, people's names, and the six attributes
// a fact can have (each with its slide title, its printed line and its question).

export const SYLLABLES = [
  'vor',
  'tal',
  'kel',
  'vix',
  'mon',
  'dra',
  ' quo',
  'zen',
  'pra',
  'lum',
  'tor',
  'bex',
  'sol',
  'nar',
  'fin',
  'gal',
  'rho',
  'tek',
  'ves',
  'pol',
  'cor',
  'dyn',
  'ark',
  'lyn',
].map((s) => s.trim());
const CITIES = [
  'Austin',
  'Lyon',
  'Osaka',
  'Porto',
  'Tallinn',
  'Quito',
  'Perth',
  'Bergen',
  'Leeds',
  'Kyoto',
  'Turin',
  'Hanoi',
  'Denver',
  'Malmo',
  'Cork',
  'Tunis',
];
const GIVEN = [
  'Ada',
  'Bruno',
  'Chen',
  'Dara',
  'Elif',
  'Femi',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Kira',
  'Luis',
  'Mira',
  'Nils',
  'Omar',
  'Priya',
];
const FAMILY = [
  'Lund',
  'Okafor',
  'Varga',
  'Sato',
  'Moreau',
  'Kowal',
  'Reyes',
  'Haas',
  'Ito',
  'Novak',
  'Silva',
  'Brandt',
  'Costa',
  'Falk',
  'Ueda',
  'Wolfe',
];

export interface AttributeKind {
  attribute: string;
  slideTitle: (entity: string) => string;
  make: (random: Random, entity: string) => { value: string; line: string; question: string };
}

// Each dated attribute has its own decade, so that a year in a query points at one kind of fact
// (BM25 would otherwise favour a short slide that has the year in another fact's line).
const year = (random: Random, from: number) => from + random.nextInt(10);
export const ATTRIBUTES: AttributeKind[] = [
  {
    attribute: 'revenue',
    slideTitle: (e) => `${e} financial results`,
    make: (r, e) => {
      const y = year(r, 2000);
      const value = `${1 + r.nextInt(9)}.${r.nextInt(10)} billion dollars`;
      return { value, line: `Revenue ${y}: ${value}`, question: `What was the revenue of ${e} in ${y}?` };
    },
  },
  {
    attribute: 'employees',
    slideTitle: (e) => `${e} people`,
    make: (r, e) => {
      const y = year(r, 2010);
      const value = `${1 + r.nextInt(60)},${String(r.nextInt(1000)).padStart(3, '0')}`;
      return {
        value,
        line: `Employees ${y}: ${value}`,
        question: `How many employees did ${e} have in ${y}?`,
      };
    },
  },
  {
    attribute: 'founded',
    slideTitle: (e) => `${e} history`,
    make: (r, e) => {
      const value = String(1900 + r.nextInt(80));
      return { value, line: `Founded: ${value}`, question: `In which year was ${e} founded?` };
    },
  },
  {
    attribute: 'headquarters',
    slideTitle: (e) => `${e} locations`,
    make: (r, e) => {
      const value = CITIES[r.nextInt(CITIES.length)]!;
      return { value, line: `Headquarters: ${value}`, question: `In which city is ${e} headquartered?` };
    },
  },
  {
    attribute: 'chief executive',
    slideTitle: (e) => `${e} leadership`,
    make: (r, e) => {
      const value = `${GIVEN[r.nextInt(GIVEN.length)]} ${FAMILY[r.nextInt(FAMILY.length)]}`;
      return { value, line: `Chief executive: ${value}`, question: `Who is the chief executive of ${e}?` };
    },
  },
  {
    attribute: 'market share',
    slideTitle: (e) => `${e} market position`,
    make: (r, e) => {
      const y = year(r, 1990);
      const value = `${2 + r.nextInt(60)} percent`;
      return {
        value,
        line: `Market share ${y}: ${value}`,
        question: `What market share did ${e} have in ${y}?`,
      };
    },
  },
];
