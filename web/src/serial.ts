// One request at a time for a panel whose answers the server computes
// without being told to stop: asked while one runs, the job runs once more
// after it (with what is wanted then), never twice at once.

import { isAbort } from './api';

export class Serial {
  private running = false;
  private again = false;

  constructor(
    private job: () => Promise<void>,
    /** The job failed (other than aborted). */
    private failed: (e: unknown) => void,
  ) {}

  ask(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.job()
      .catch((e: unknown) => {
        if (!isAbort(e)) this.failed(e);
      })
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.ask();
        }
      });
  }

  busy(): boolean {
    return this.running;
  }
}
