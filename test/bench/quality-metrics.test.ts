import { describe, expect, it } from 'vitest';
import {
  type AuditEntry,
  auditedTargets,
  auditProblems,
  breadcrumbHas,
  breadcrumbNames,
  scoreRanking,
  sectionOf,
  sectionTexts,
} from '../../bench/quality-metrics.js';

describe('bench:quality measures', () => {
  it('nDCG@k with graded gains and the ideal ranking from the qrels, as trec_eval ndcg_cut', () => {
    const rel = new Map([
      ['a', 2],
      ['b', 1],
    ]);
    expect(scoreRanking(['a', 'b', 'x'], rel, 10)).toEqual({ ndcg: 1, recall: 1, mrr: 1 });
    const s = scoreRanking(['x', 'b', 'a'], rel, 10);
    const dcg = 1 / Math.log2(3) + 2 / Math.log2(4);
    const idcg = 2 / Math.log2(2) + 1 / Math.log2(3);
    expect(s.ndcg).toBeCloseTo(dcg / idcg, 12);
    expect(s.mrr).toBe(0.5);
    // Cut at k: a relevant document below rank k counts for nothing.
    expect(scoreRanking(['x', 'y', 'a'], rel, 2)).toEqual({ ndcg: 0, recall: 0, mrr: 0 });
    expect(scoreRanking(['x', 'a'], rel, 2).recall).toBe(0.5);
  });

  it('a breadcrumb names a section only by an exact heading number', () => {
    expect(sectionOf('1.9.2 Den Spanske Syge')).toBe('1.9.2');
    expect(sectionOf('1.9. Verdenskrig')).toBe('1.9');
    expect(sectionOf('Grønlands kulturliv')).toBeUndefined();
    const meta = {
      headers: ['1.9 Verdenskrig, kriser og socialreformer (1914-40)', '1.9.2 Den Spanske Syge'],
    };
    expect(breadcrumbHas(meta as never, '1.9.2')).toBe(true);
    expect(breadcrumbHas(meta as never, '1.9')).toBe(true);
    expect(breadcrumbHas(meta as never, '1.9.1')).toBe(false);
    expect(breadcrumbHas(meta as never, '1.1')).toBe(false);
    expect(breadcrumbHas(undefined, '1.9')).toBe(false);
  });

  const chapter = [
    '# 2.3 Det danske retssamfund',
    '## 2.3.1 Rettigheder i grundloven',
    'Ytringsfriheden\tgælder for alle.',
    '## 2.3.4 Borgernes pligter',
    '### Straf',
    'I Danmark er den kriminelle lav-',
    'alder 15 år.',
  ].join('\n');

  it('a section holds the running text under its heading and its sub-headings', () => {
    const sections = sectionTexts(chapter);
    expect(sections.get('Straf')).toBe('I Danmark er den kriminelle lavalder 15 år.');
    expect(sections.get('2.3.4 Borgernes pligter')).toBe(sections.get('Straf'));
    expect(sections.get('2.3.1 Rettigheder i grundloven')).toBe('Ytringsfriheden gælder for alle.');
    expect(sections.get('2.3 Det danske retssamfund')).toContain(
      'Ytringsfriheden gælder for alle. I Danmark',
    );
  });

  it('an audit entry is checked against the textbook: the evidence where it says, not in a label it calls wrong', () => {
    const sections = sectionTexts(chapter);
    const elsewhere: AuditEntry = {
      id: 'q1',
      kind: 'elsewhere',
      answerIn: ['Straf'],
      evidence: 'kriminelle lavalder',
    };
    expect(auditProblems(elsewhere, '2.3.1', sections)).toEqual([]);
    // The label holds the evidence after all, or the named section does not.
    expect(auditProblems(elsewhere, '2.3.4', sections)).toEqual([
      'q1: "kriminelle lavalder" is in label 2.3.4',
    ]);
    const misplaced: AuditEntry = { ...elsewhere, answerIn: ['2.3.1 Rettigheder i grundloven'] };
    expect(auditProblems(misplaced, '2.3', sections)).toHaveLength(2);
    const also: AuditEntry = { id: 'q2', kind: 'also', answerIn: ['Straf'], evidence: '15 år' };
    expect(auditProblems(also, '2.3.4', sections)).toEqual([]);
    expect(auditProblems(also, '2.3.1', sections)).toEqual(['q2: "15 år" is not in label 2.3.1']);
    expect(
      auditProblems({ id: 'q3', kind: 'absent', evidence: 'Loyal to Familia' }, '2.3.4', sections),
    ).toEqual([]);
    expect(auditProblems({ id: 'q4', kind: 'absent', evidence: 'lavalder' }, '2.3.4', sections)).toEqual([
      'q4: "lavalder" is in "2.3 Det danske retssamfund"',
    ]);
  });

  it('an audited question is scored against the sections that answer it', () => {
    const straf = { headers: ['2.3 Det danske retssamfund', '2.3.4 Borgernes pligter', 'Straf'] } as never;
    const rights = { headers: ['2.3 Det danske retssamfund', '2.3.1 Rettigheder i grundloven'] } as never;
    const entry: AuditEntry = { id: 'q1', kind: 'elsewhere', answerIn: ['Straf'], evidence: 'x' };
    expect(auditedTargets('2.3.1', entry)).toEqual(['Straf']);
    expect(auditedTargets('2.3.1', { ...entry, kind: 'also' })).toEqual(['2.3.1', 'Straf']);
    expect(auditedTargets('2.3.1', { id: 'q1', kind: 'absent', evidence: 'x' })).toEqual(['2.3.1']);
    expect(auditedTargets('2.3.1', undefined)).toEqual(['2.3.1']);
    expect(breadcrumbNames(straf, 'Straf')).toBe(true);
    expect(breadcrumbNames(straf, '2.3.4')).toBe(true);
    expect(breadcrumbNames(rights, 'Straf')).toBe(false);
    expect(breadcrumbNames(rights, '2.3.4')).toBe(false);
    // A title names a heading whole, not a part of one.
    expect(breadcrumbNames(straf, 'Borgernes pligter')).toBe(false);
  });
});
