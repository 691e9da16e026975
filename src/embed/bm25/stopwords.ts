/**
 * Stop words of fastembed's `Qdrant/bm25` model: the NLTK stop-word lists (nltk_data
 * `corpora/stopwords`, Apache-2.0) that the model repository ships as `english.txt` and
 * `danish.txt`. Copied verbatim, in file order; a test compares them with the copies
 * in `test/fixtures/contracts/bm25-stopwords/`. fastembed matches them against the lower-cased token,
 * before stemming.
 */

export type Bm25Language = 'english' | 'danish';

// Whitespace-separated, in file order (no stop word contains a space).
const words = (list: string): readonly string[] => list.trim().split(/\s+/);

const ENGLISH = words(`
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves
he him his himself she she's her hers herself it it's its itself they them their theirs themselves
what which who whom this that that'll these those am is are was were be been being have has had
having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over
under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't should should've now
d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't
wasn wasn't weren weren't won won't wouldn wouldn't
`);

const DANISH = words(`
og i jeg det at en den til er som på de med han af for ikke der var mig sig men et har om vi min
havde ham hun nu over da fra du ud sin dem os op man hans hvor eller hvad skal selv her alle vil
blev kunne ind når være dog noget ville jo deres efter ned skulle denne end dette mit også under
have dig anden hende mine alt meget sit sine vor mod disse hvis din nogle hos blive mange ad bliver
hendes været thi jer sådan
`);

export const BM25_STOPWORDS: Readonly<Record<Bm25Language, readonly string[]>> = {
  english: ENGLISH,
  danish: DANISH,
};
