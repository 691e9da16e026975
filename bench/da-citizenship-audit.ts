import type { AuditEntry } from './quality-metrics.js';

/**
 * An audit of the Danish set's labels (questions-dev.jsonl) against the edition of the textbook in
 * the corpus (bench:quality --misses, main at c9b782e): every question the offline default missed
 * in its top five whose label names a numbered heading, and every question it found in its top
 * five but not first (where a wrong label hides best). Each entry says where the answer is, with
 * the words that show it; `npm run bench:quality` checks every entry against the textbook before it
 * scores with it, and reports the entries that no longer hold.
 *
 * Not audited: the questions whose first result lies in the labelled section, so scores under these
 * labels are an upper bound. Left out as they are: misses where the label holds the answer and the
 * search did not find it (2021.11-8, 2022.06-17, 2022.11-24, 2022.11-38, 2023.11-8; 2021.11-10 found
 * only the chapter's introduction, which says it too, but a chapter names all its sections), and
 * questions the textbook answers in no clear place (2021.11-25, 2021.11-28, 2022.11-37, 2023.05-8,
 * 2023.05-38).
 * `absent` questions keep their label: it still names the section on the topic.
 * Issue 33's third session read the first result of every answerable question the default then
 * ranked first elsewhere (35, main at 821014b): five of those first results answer the question as
 * the labelled section does; they are the entries of kind `also` marked below.
 */
export const DANISH_AUDIT: readonly AuditEntry[] = [
  // The label names another section than the one that holds the answer in this edition.
  {
    id: '2021.11-4',
    kind: 'elsewhere',
    answerIn: ['6.5 Indvandring til danmark gennem tiderne'],
    evidence: 'krigsflygtninge fra Tyskland',
  },
  {
    id: '2021.11-7',
    kind: 'elsewhere',
    answerIn: ['Straffesager'],
    evidence: 'stilles for en dommer inden for 24 timer',
  },
  {
    id: '2023.05-33',
    kind: 'elsewhere',
    answerIn: ['Straffesager'],
    evidence: 'stilles for en dommer inden for 24 timer',
  },
  {
    id: '2021.11-11',
    kind: 'elsewhere',
    answerIn: ['Domstolene'],
    evidence: 'øverste domstol i Danmark er Højesteret',
  },
  {
    id: '2021.11-12',
    kind: 'elsewhere',
    answerIn: ['3.2.3 Velfærdssamfundets opgaver og aktører'],
    evidence: 'Jobcentre',
  },
  {
    id: '2021.11-13',
    kind: 'elsewhere',
    answerIn: ['2.2.5 Det lokale selvstyre i kommuner og regioner'],
    evidence: 'amter blev erstattet af 5 regioner',
  },
  { id: '2021.11-16', kind: 'elsewhere', answerIn: ['Straf'], evidence: 'kriminelle lavalder' },
  { id: '2023.05-21', kind: 'elsewhere', answerIn: ['Straf'], evidence: 'kriminelle lavalder' },
  {
    id: '2021.11-26',
    kind: 'elsewhere',
    answerIn: ['Folketingsvalg'],
    evidence: 'folketingsvalg mindst hvert fjerde år',
  },
  {
    id: '2021.11-30',
    kind: 'elsewhere',
    answerIn: ['1.9.2 Den Spanske Syge'],
    evidence: 'slutningen af krigen i 1918',
  },
  {
    id: '2023.05-16',
    kind: 'elsewhere',
    answerIn: ['1.9.2 Den Spanske Syge'],
    evidence: 'slutningen af krigen i 1918',
  },
  {
    id: '2021.11-32',
    kind: 'elsewhere',
    answerIn: ['1.9.4 Økonomisk krise og socialreformer'],
    evidence: 'Stauning blevet Danmarks første socialdemokratiske statsminister',
  },
  { id: '2021.11-33', kind: 'elsewhere', answerIn: ['1.12.3 Politisk opbrud'], evidence: 'Jordskredsvalget' },
  {
    id: '2022.06-7',
    kind: 'elsewhere',
    answerIn: ['1.4.2 Christian 4. og Svenskekrigene'],
    evidence: 'i 1658 for altid måtte afstå Skåne',
  },
  { id: '2022.06-11', kind: 'elsewhere', answerIn: ['Domstolene'], evidence: 'domstole er uafhængige' },
  {
    id: '2022.06-22',
    kind: 'elsewhere',
    answerIn: ['1.13.1 Danmark i det nye Europa'],
    evidence: 'Enhedslisten, som var en samling',
  },
  {
    id: '2022.06-35',
    kind: 'elsewhere',
    answerIn: ['Domstolene'],
    evidence: 'appelleret fra byretten til landsretten',
  },
  // "Hvad siger grundloven?" is a level-2 heading after "2.2.1 Grundloven": part of 2.2.1 in print,
  // a sibling in the Markdown, so its chunks' breadcrumbs never name 2.2.1.
  { id: '2022.11-13', kind: 'elsewhere', answerIn: ['Hvad siger grundloven?'], evidence: 'magt er tredelt' },
  {
    id: '2023.05-1',
    kind: 'elsewhere',
    answerIn: ['3.2.3 Velfærdssamfundets opgaver og aktører'],
    evidence: 'Kommunerne har allerflest af de opgaver',
  },
  {
    id: '2023.11-2',
    kind: 'elsewhere',
    answerIn: ['1.3.2 Pest, genopbygning og Kalmarunion'],
    evidence: 'Margrete at blive regent i Norge',
  },
  {
    id: '2023.11-11',
    kind: 'elsewhere',
    answerIn: ['1.4.2 Christian 4. og Svenskekrigene'],
    evidence: 'Trediveårskrigen',
  },
  // Found in the top five under the label, but answered elsewhere (hits whose first result lies
  // outside the labelled section).
  {
    id: '2021.11-9',
    kind: 'elsewhere',
    answerIn: ['1.13.5 Velfærdsstatens udfordringer'],
    evidence: 'i 2009 valgt som ny generalsekretær',
  },
  {
    id: '2021.11-15',
    kind: 'elsewhere',
    answerIn: ['Domstolene'],
    evidence: 'dommer må derfor ikke bære symboler',
  },
  {
    id: '2021.11-20',
    kind: 'elsewhere',
    answerIn: ['3.3.1 Fra landbrugssamfund til videns- og servicesamfund'],
    evidence: 'Omkring 30 procent af lønmodtagerne',
  },
  {
    id: '2022.11-35',
    kind: 'elsewhere',
    answerIn: ['3.2.1 Den danske velfærdsmodels udvikling'],
    evidence: 'grænse for dagpengeperioden',
  },
  {
    id: '2023.11-16',
    kind: 'elsewhere',
    answerIn: ['Hvad siger grundloven?'],
    evidence: 'modtager Ukraines\\s+præsident',
  },
  // The labelled section holds the answer, and so does another.
  {
    id: '2022.11-27',
    kind: 'also',
    answerIn: ['Grundtvig og folkekirken', '2.2.1 Grundloven – Danmarks forfatning'],
    evidence: '(grundlov[^.]{0,40}|Den )5\\. juni 1849',
  },
  // Issue 33, third session: first results that answer as the label does (regions run the health
  // service, 5 June, sold to the USA in 1917, the synagogue in 2015, no vote for women in 1849).
  {
    id: '2022.06-1',
    kind: 'also',
    answerIn: ['Det danske sundhedsvæsen'],
    evidence: 'fem regioner,? (der står for driften|som har ansvaret for at drive)[^.]*sundhedsvæsenet',
  },
  {
    id: '2022.06-33',
    kind: 'also',
    answerIn: ['Grundlovsdag'],
    evidence: '5\\. juni (er|kaldes) grundlovsdag',
  },
  {
    id: '2022.11-10',
    kind: 'also',
    answerIn: ['1.9.1 Første Verdenskrig (1914-18)'],
    evidence: 'solgt til USA i 1917|i 1917 solgt[^;]*; til gengæld for salget anerkendte USA',
  },
  {
    id: '2023.05-12',
    kind: 'also',
    answerIn: ['6.14 Diskrimination, antisemitisme, hadforbrydelser og ekstremisme'],
    evidence: 'synagog\\w* i det indre København',
  },
  {
    id: '2023.11-12',
    kind: 'also',
    answerIn: ['1.6.3 Vejen til en fri grundlov'],
    evidence: 'Hverken kvinder eller fattige havde valgret|Kvinder og tjenestefolk[^.]*fik ikke valgret',
  },
  // The textbook does not say: questions on events after it, or on laws it does not cover.
  { id: '2021.11-36', kind: 'absent', evidence: 'Loyal to Familia' },
  { id: '2022.06-39', kind: 'absent', evidence: 'rituel' },
  { id: '2022.11-14', kind: 'absent', evidence: 'nationalt kompromis' },
  { id: '2022.11-39', kind: 'absent', evidence: 'seksuel lavalder|samleje med (en person|nogen|børn) under' },
  {
    id: '2022.11-40',
    kind: 'absent',
    evidence: 'partnervold|vold (mod|i) (sin |hjemmet|familien|ægtefælle)',
  },
  { id: '2022.11-41', kind: 'absent', evidence: 'juridisk køn|kønsskift' },
  { id: '2023.11-14', kind: 'absent', evidence: 'formand for Venstre|Troels Lund' },
  // Found under its label, but the textbook does not say which parties recommended a no in 2022.
  { id: '2022.06-37', kind: 'absent', evidence: 'anbefale\\w*.{0,40}nej' },
];
