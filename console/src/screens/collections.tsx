import type { Session } from '../main';
import { href } from '../route';
import { Show, useLoad, when } from '../ui';

export function Collections({ session }: { session: Session }) {
  const [loaded, reload] = useLoad(() => session.api.collections(), [session]);
  return (
    <section aria-labelledby="title">
      <div class="heading-row">
        <h1 id="title">Collections</h1>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <Show loaded={loaded} what="collections">
        {({ collections }) =>
          collections.length === 0 ? (
            <p>
              No collections yet. <a href={href({ name: 'upload', collection: null })}>Upload files</a> to
              create one.
            </p>
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Collection</th>
                    <th scope="col" class="num">
                      Files
                    </th>
                    <th scope="col" class="num">
                      Chunks
                    </th>
                    <th scope="col">Last ingest</th>
                  </tr>
                </thead>
                <tbody>
                  {collections.map((c) => (
                    <tr key={c.name}>
                      <th scope="row">
                        <a href={href({ name: 'documents', collection: c.name })}>{c.name}</a>
                      </th>
                      <td class="num">{c.files}</td>
                      <td class="num">{c.chunks}</td>
                      <td>{when(c.last_ingest)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
    </section>
  );
}
